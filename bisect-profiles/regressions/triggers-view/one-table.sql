-- The triggers of one table, as a client asks for them.
\set i random(1, 300)
SELECT count(*) FROM information_schema.triggers
 WHERE event_object_table = 'tt' || CAST(:i AS int);
