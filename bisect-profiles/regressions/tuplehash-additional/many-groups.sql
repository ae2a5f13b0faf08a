-- A new group at nearly every row: each one copies its key into the
-- hash table and allocates its transition states.
\set lo random(0, 1000)
SELECT count(*), sum(s)
  FROM (SELECT k, count(*) AS n, sum(v) AS s
          FROM events WHERE id > :lo GROUP BY k) AS g;
