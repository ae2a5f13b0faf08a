-- The pattern operators (~>=~, ~<=~, ~>~, ~<~) compare text bytewise and
-- belong to text_pattern_ops, not to the btree family of the histogram's
-- "<": the compatibility check goes through every family of "<" and finds
-- no ordering family holding both, looking up each one's index AM on the way.
\set a random(0, 100)
\set b random(110, 210)
\set c random(0, 100)
\set d random(110, 210)
SELECT count(*) FROM readings
 WHERE t1 ~>=~ lpad(:a::text, 3, '0') AND t2 ~<=~ lpad(:b::text, 3, '0')
   AND t3 ~>~ lpad(:c::text, 3, '0') AND t4 ~<~ lpad(:d::text, 3, '0');
