-- A one-key sort of 100,000 int4 with many equal values; OFFSET past the
-- end returns nothing, so the time is the sort's.
\set lo random(1, 100000)
SELECT k FROM dups WHERE id BETWEEN :lo AND :lo + 99999 ORDER BY k OFFSET 100000;
