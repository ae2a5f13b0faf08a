-- A SQL function that is inlined: no function statistics are reported
-- (track_functions is 'none'), so the statements leave no stats pending.
CREATE FUNCTION next_id(i int) RETURNS int LANGUAGE sql IMMUTABLE
  AS $$ SELECT i + 1 $$;
