-- Every page of the table is read; the bound changes each transaction.
\set lo random(1, 900)
SELECT count(*) FROM wide WHERE k1 >= :lo;
