-- Ten groups: each row finds its group and updates its transition states.
\set lo random(0, 1000)
SELECT kind, count(*), sum(v), avg(v)
  FROM events WHERE id > :lo GROUP BY kind;
