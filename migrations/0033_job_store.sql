ALTER TABLE `jobs` ADD `store` text DEFAULT 'd1' NOT NULL;--> statement-breakpoint
ALTER TABLE `jobs` ADD `rows_stored_at` integer;--> statement-breakpoint
-- Every job so far stored its rows in D1 with its own row, in the transaction that created it.
UPDATE `jobs` SET `rows_stored_at` = `created_at`;--> statement-breakpoint
CREATE INDEX `jobs_rows_unstored` ON `jobs` (`created_at`) WHERE rows_stored_at IS NULL;