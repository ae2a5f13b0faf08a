-- Each row: float8mul, float8div, float8pl, float8mi and float8_accum,
-- every one with the overflow/underflow checks the culprit reordered.
\set lo random(1, 180000)
SELECT sum(a * b + c / (b + 1.5) - a * 0.5), avg(a * c - b)
  FROM floats WHERE id BETWEEN :lo AND :lo + 20000;
