-- 300 tables with one trigger each. EXECUTE PROCEDURE is read by every
-- version (EXECUTE FUNCTION only from 11).
CREATE FUNCTION keep_row() RETURNS trigger LANGUAGE plpgsql
  AS $$ BEGIN RETURN NEW; END $$;
DO $$
BEGIN
  FOR i IN 1..300 LOOP
    EXECUTE format('CREATE TABLE tt%s (id int)', i);
    EXECUTE format('CREATE TRIGGER keep BEFORE INSERT ON tt%s FOR EACH ROW EXECUTE PROCEDURE keep_row()', i);
  END LOOP;
END $$;
