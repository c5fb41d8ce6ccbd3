-- Change notifications (issue 13): every instance LISTENs on `portcullis_changes` and
-- drops its cached copy of a changed client, user or NAS, so a removed client or a
-- rotated secret stops working everywhere at once instead of after a cache TTL.
-- Payload: `<table>:<key>` (the key column is the trigger's argument).
CREATE OR REPLACE FUNCTION portcullis_notify_change() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    k TEXT;
BEGIN
    IF TG_OP = 'DELETE' THEN
        k := to_jsonb(OLD) ->> TG_ARGV[0];
    ELSE
        k := to_jsonb(NEW) ->> TG_ARGV[0];
    END IF;
    PERFORM pg_notify('portcullis_changes', TG_TABLE_NAME || ':' || k);
    RETURN NULL;
END
$$;

CREATE TRIGGER clients_changed AFTER INSERT OR UPDATE OR DELETE ON clients
    FOR EACH ROW EXECUTE FUNCTION portcullis_notify_change('id');
CREATE TRIGGER users_changed AFTER INSERT OR UPDATE OR DELETE ON users
    FOR EACH ROW EXECUTE FUNCTION portcullis_notify_change('username');
CREATE TRIGGER nas_changed AFTER INSERT OR UPDATE OR DELETE ON nas
    FOR EACH ROW EXECUTE FUNCTION portcullis_notify_change('name');
