-- Many groups: one per ship date.
\set q random(1, 40)
SELECT l_shipdate, count(*), sum(l_extendedprice)
  FROM lineitem WHERE l_quantity > :q GROUP BY l_shipdate;
