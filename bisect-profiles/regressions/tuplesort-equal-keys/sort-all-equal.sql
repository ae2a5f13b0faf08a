-- A one-key sort of 100,000 equal int8.
\set lo random(1, 100000)
SELECT same FROM dups WHERE id BETWEEN :lo AND :lo + 99999 ORDER BY same OFFSET 100000;
