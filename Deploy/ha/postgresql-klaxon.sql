-- The role and database a Klaxon pair shares. Run it once, as the server's superuser, from an account
-- that can read the password file (psql reads it: the password stays out of `ps` and the history):
--   psql -h db.internal -U postgres -f Deploy/ha/postgresql-klaxon.sql
-- Klaxon creates its tables itself on first start (whichever node comes first). It needs no
-- superuser rights: it owns its database, and any role may take advisory locks.
--
-- pg_hba.conf: let the nodes in with a password (one line per node, or their subnet), then reload:
--   host  klaxon  klaxon  10.0.0.11/32  scram-sha-256
--   host  klaxon  klaxon  10.0.0.12/32  scram-sha-256
-- TLS to the server is not supported yet: keep the nodes and the server on a private network.
-- Let the nodes reach the server directly or through a TCP proxy, not through PgBouncer in
-- transaction mode: a duty is a session advisory lock, held as long as the session lasts.
--
-- Connections: each node keeps up to 8, plus one per source and two (evaluator, pruner) for the
-- duties it holds or tries for. klaxon-node.yaml's 4 sources make 14 per node, 28 for the pair,
-- well within the default max_connections = 100.

\set pw `cat /etc/klaxon/secrets/pg`
CREATE ROLE klaxon LOGIN PASSWORD :'pw';
CREATE DATABASE klaxon OWNER klaxon;

