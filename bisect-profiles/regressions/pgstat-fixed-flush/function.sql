\set i random(1, 100000)
SELECT next_id(:i);
