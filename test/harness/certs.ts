// Real X.509 certificates made at test time (EC P-256, @peculiar/x509 on WebCrypto): a CA, server
// certificates naming the hosts they serve, client certificates naming their holder, and a rogue CA
// nobody trusts. Written as PEM files, as an operator would have them.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { webcrypto, type webcrypto as WebCrypto } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

type CryptoKey = WebCrypto.CryptoKey;
type CryptoKeyPair = WebCrypto.CryptoKeyPair;

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
const DAY_MS = 86_400_000;
let serial = 1;

interface Issuer {
  cert: x509.X509Certificate;
  keys: CryptoKeyPair;
}

async function pkcs8Pem(key: CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return `-----BEGIN PRIVATE KEY-----\n${der.toString('base64').replace(/(.{64})/g, '$1\n')}\n-----END PRIVATE KEY-----\n`;
}

async function makeCa(name: string): Promise<Issuer> {
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: (serial++).toString(16).padStart(2, '0'),
    name: `CN=${name}`,
    notBefore: new Date(Date.now() - DAY_MS),
    notAfter: new Date(Date.now() + 30 * DAY_MS),
    keys,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
    ],
  });
  return { cert, keys };
}

/** A leaf certificate `cn` signed by `issuer`, naming `dns` and `ips` (a server's), for server and client use. */
async function makeLeaf(
  issuer: Issuer,
  cn: string,
  o: { dns?: string[]; ips?: string[] } = {},
): Promise<{ cert: string; key: string }> {
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as CryptoKeyPair;
  const names = [
    ...(o.dns ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(o.ips ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: (serial++).toString(16).padStart(2, '0'),
    subject: `CN=${cn}`,
    issuer: issuer.cert.subject,
    notBefore: new Date(Date.now() - DAY_MS),
    notAfter: new Date(Date.now() + 30 * DAY_MS),
    publicKey: keys.publicKey,
    signingKey: issuer.keys.privateKey,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyAgreement, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
      ...(names.length > 0 ? [new x509.SubjectAlternativeNameExtension(names)] : []),
    ],
  });
  return { cert: cert.toString('pem') + '\n', key: await pkcs8Pem(keys.privateKey) };
}

export interface CertFiles {
  dir: string;
  /** The CA every node trusts. */
  ca: string;
  /** A CA nobody trusts. */
  rogueCa: string;
  /** `name` -> its cert and key files. */
  leaf: Record<string, { cert: string; key: string }>;
}

/**
 * Make a CA, a rogue CA, and the leaves asked for: `{ name: { dns, ips, rogue } }` (rogue: signed by the
 * rogue CA). Files go in a temp dir (the caller removes it).
 */
export async function makeCerts(
  leaves: Record<string, { dns?: string[]; ips?: string[]; rogue?: boolean }>,
): Promise<CertFiles> {
  const dir = await mkdtemp(join(tmpdir(), 'clink-certs-'));
  const [ca, rogue] = await Promise.all([makeCa('clink test CA'), makeCa('rogue CA')]);
  const files: CertFiles = { dir, ca: join(dir, 'ca.pem'), rogueCa: join(dir, 'rogue-ca.pem'), leaf: {} };
  await writeFile(files.ca, ca.cert.toString('pem') + '\n');
  await writeFile(files.rogueCa, rogue.cert.toString('pem') + '\n');
  for (const [name, o] of Object.entries(leaves)) {
    const { cert, key } = await makeLeaf(o.rogue ? rogue : ca, name, o);
    files.leaf[name] = { cert: join(dir, `${name}.pem`), key: join(dir, `${name}-key.pem`) };
    await writeFile(files.leaf[name]!.cert, cert);
    await writeFile(files.leaf[name]!.key, key, { mode: 0o600 });
  }
  return files;
}
