-- No table, no WAL, no I/O: the backend goes idle with no pending stats,
-- the path on which the culprit loops over every stats kind.
\set i random(1, 100000)
SELECT :i::int * 2;
