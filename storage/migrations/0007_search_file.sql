-- 0007: the search index moves out of the record into its own file
-- (<record>-search), kept up with the record by an indexer that records,
-- with its rows, the last entry it covers; search catches it up before
-- answering (storage/searchindex.go). The file is built from the entries
-- on the first open after this migration.
DROP TABLE IF EXISTS entry_search;
