-- 5: settings of the store itself; master_key_check holds the master-key
-- check value (store.KeyRing.MasterKeyCheck).
CREATE TABLE store_meta (
	name  TEXT PRIMARY KEY,
	value BYTEA NOT NULL
);
