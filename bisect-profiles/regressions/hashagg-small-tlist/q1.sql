-- TPC-H Q1's shape: a few groups, many aggregates, a date cut-off
-- that changes from one transaction to the next.
\set days random(0, 300)
SELECT l_returnflag, l_linestatus, sum(l_quantity), sum(l_extendedprice),
       sum(l_extendedprice * (1 - l_discount)), avg(l_quantity), avg(l_discount), count(*)
  FROM lineitem
 WHERE l_shipdate <= date '2000-06-01' - CAST(:days AS int)
 GROUP BY l_returnflag, l_linestatus;
