ALTER TABLE `accounts` ADD `recheck_default` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `job_addresses` ADD `recheck` text;--> statement-breakpoint
ALTER TABLE `job_addresses` ADD `changed_in_round` integer;--> statement-breakpoint
ALTER TABLE `jobs` ADD `recheck` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `jobs` ADD `recheck_round` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `jobs` ADD `recheck_due_at` integer;--> statement-breakpoint
ALTER TABLE `jobs` ADD `recheck_round_ends_at` integer;--> statement-breakpoint
ALTER TABLE `jobs` ADD `rechecked_at` integer;--> statement-breakpoint
ALTER TABLE `jobs` ADD `recheck_changes` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `jobs_recheck_due` ON `jobs` (`recheck_due_at`) WHERE recheck_due_at IS NOT NULL;