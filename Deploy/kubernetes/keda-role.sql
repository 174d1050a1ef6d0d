-- The read-only role KEDA's PostgreSQL scaler uses (Deploy/kubernetes/keda.yaml): it may read the
-- `state` column of `segments` and nothing else, and every transaction it starts is read-only.
-- Run once as the database's owner, with your own password:
--
--   psql "postgresql://splice@postgres.example:5432/splice" -v password="'…'" -f keda-role.sql
--
-- (psql fills in :"DBNAME", the database it is connected to.)
--
CREATE ROLE splice_keda LOGIN PASSWORD :password;
ALTER ROLE splice_keda SET default_transaction_read_only = on;
ALTER ROLE splice_keda SET statement_timeout = '5s';
GRANT CONNECT ON DATABASE :"DBNAME" TO splice_keda;
GRANT USAGE ON SCHEMA public TO splice_keda;
GRANT SELECT (state) ON segments TO splice_keda;
