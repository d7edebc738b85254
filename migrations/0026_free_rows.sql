ALTER TABLE `jobs` ADD `free_rows_dropped_at` integer;--> statement-breakpoint
CREATE INDEX `jobs_free_rows_kept` ON `jobs` (`created_at`) WHERE free_rows_dropped_at IS NULL;