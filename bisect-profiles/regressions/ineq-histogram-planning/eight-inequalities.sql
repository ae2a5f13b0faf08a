-- Planned at every transaction (simple protocol): each of the eight
-- clauses is an inequality other than the histogram's own "<", so its
-- estimate first checks that the two operators are compatible.
\set a random(0, 100)
\set b random(0, 100)
\set c random(110, 210)
\set d random(0, 100)
\set e random(0, 100)
\set f random(110, 210)
\set g random(0, 100)
\set h random(0, 100)
SELECT count(*) FROM readings
 WHERE c1 >= :a AND c2 > :b AND c3 <= :c AND c4 >= :d
   AND c5 > :e AND c6 <= :f AND c7 >= :g AND c8 > :h;
