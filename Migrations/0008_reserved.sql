-- Reserved: migration 0008 belongs to another branch (segment quality, …) that lands on main before this one.
-- This placeholder keeps versions gapless (Migration.validateSequence) until then; the merge drops it
-- for the real 0008, which sorts before 0009_http_api.sql.
SELECT 1;
