-- 0011: the window summaries that are missing (a database from before
-- migration 0005, or sessions restored from a dump before restores wrote
-- them) are built by the Go step of this migration (backfillWindows), as
-- far as a bounded budget of entries allows; the others are built on
-- first read, as before. Nothing changes in the schema.
SELECT 1;
