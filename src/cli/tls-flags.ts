/**
 * The TLS flags of `clink node` and the client commands: which combinations make sense, each refusal
 * one line naming the flags, and the PEM files loaded once the set is coherent.
 *
 *   coordinator: --tls-cert --tls-key [--tls-client-ca]         (the control port; mTLS with a client CA)
 *   worker:      --tls-ca [--tls-client-cert --tls-client-key]  (verifies the coordinator and its data peers)
 *                --tls-cert --tls-key                           (its data port, which peers verify)
 *   client:      --tls-ca [--tls-client-cert --tls-client-key]
 *   any client side: --tls-no-verify-hostname (the chain is still checked; needs --tls-ca)
 */
import { loadTlsClient, loadTlsServer, type TlsClientConfig, type TlsServerConfig } from '../net/index.js';

export interface TlsFlags {
  tlsCert?: string;
  tlsKey?: string;
  tlsClientCa?: string;
  tlsCa?: string;
  tlsClientCert?: string;
  tlsClientKey?: string;
  tlsNoVerifyHostname?: boolean;
}

export type TlsRole = 'coordinator' | 'worker' | 'client';

/** What is wrong with this set of TLS flags for `role`, one line each (empty: coherent). */
export function tlsFlagProblems(o: TlsFlags, role: TlsRole): string[] {
  const out: string[] = [];
  if (!!o.tlsCert !== !!o.tlsKey) out.push('--tls-cert and --tls-key go together: the certificate and its private key');
  if (!!o.tlsClientCert !== !!o.tlsClientKey)
    out.push('--tls-client-cert and --tls-client-key go together: the client certificate and its private key');
  if (o.tlsNoVerifyHostname && !o.tlsCa)
    out.push('--tls-no-verify-hostname needs --tls-ca: without a CA nothing would be verified at all');
  if (o.tlsClientCert && !o.tlsCa)
    out.push(
      '--tls-client-cert needs --tls-ca: a client certificate is presented over a TLS connection this node verifies',
    );
  if (role === 'client' && (o.tlsCert || o.tlsClientCa))
    out.push(
      '--tls-cert, --tls-key and --tls-client-ca are for nodes; a client takes --tls-ca, --tls-client-cert and --tls-client-key',
    );
  if (role === 'coordinator' && o.tlsClientCa && !o.tlsCert)
    out.push('--tls-client-ca (mTLS) needs --tls-cert and --tls-key: only a TLS port can ask for client certificates');
  if (role === 'coordinator' && (o.tlsCa || o.tlsClientCert))
    out.push(
      '--tls-ca and --tls-client-cert are for workers and clients; a coordinator serves --tls-cert and --tls-key (and asks for client certificates with --tls-client-ca)',
    );
  if (role === 'worker' && o.tlsCert && !o.tlsCa)
    out.push(
      'a worker with --tls-cert serves its data port over TLS, and verifies the coordinator and its peers with --tls-ca: give --tls-ca too',
    );
  if (role === 'worker' && o.tlsCa && !o.tlsCert)
    out.push(
      'a worker with --tls-ca also needs --tls-cert and --tls-key: its data port serves TLS to its peers, which verify it',
    );
  return out;
}

/**
 * Load what the flags name (call once tlsFlagProblems is empty). A worker with a client certificate
 * (mTLS) asks its data peers for theirs too, signed by the cluster's CA (--tls-ca): under mTLS nothing
 * reaches a subtask from a connection without one.
 */
export async function loadTls(
  o: TlsFlags,
  role?: TlsRole,
): Promise<{ server?: TlsServerConfig; client?: TlsClientConfig }> {
  const clientCa = o.tlsClientCa ?? (role === 'worker' && o.tlsClientCert ? o.tlsCa : undefined);
  const server =
    o.tlsCert && o.tlsKey
      ? await loadTlsServer({ cert: o.tlsCert, key: o.tlsKey, ...(clientCa ? { clientCa } : {}) })
      : undefined;
  const client = o.tlsCa
    ? await loadTlsClient({
        ca: o.tlsCa,
        ...(o.tlsClientCert ? { clientCert: o.tlsClientCert } : {}),
        ...(o.tlsClientKey ? { clientKey: o.tlsClientKey } : {}),
        verifyHostname: !o.tlsNoVerifyHostname,
      })
    : undefined;
  return { ...(server ? { server } : {}), ...(client ? { client } : {}) };
}
