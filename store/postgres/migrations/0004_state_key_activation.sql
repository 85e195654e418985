-- 4: when each state key starts to seal (store.StateKey.ActivatesAt, Unix
-- nanoseconds); keys added before seal from their creation.
ALTER TABLE state_keys ADD COLUMN activates_at BIGINT;
UPDATE state_keys SET activates_at = created_at;
ALTER TABLE state_keys ALTER COLUMN activates_at SET NOT NULL;
