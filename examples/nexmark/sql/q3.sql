-- Nexmark q3, local item suggestion: sellers in Oregon, Idaho or California of auctions in category
-- 10 (the suite's text). A regular join: both sides are kept in state, keyed by seller id.
SELECT P.name, P.city, P.state, A.id
FROM auction AS A INNER JOIN person AS P ON A.seller = P.id
WHERE A.category = 10 AND (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA');
