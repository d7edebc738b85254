CREATE TABLE `job_watch_domains` (
	`job_id` text NOT NULL,
	`domain` text NOT NULL,
	`account_id` text NOT NULL,
	`facts_changed_at` integer NOT NULL,
	`facts_key` text,
	`looked_at` integer NOT NULL,
	`change` text,
	`changed_at` integer,
	`round` integer,
	PRIMARY KEY(`job_id`, `domain`)
);
--> statement-breakpoint
CREATE INDEX `job_watch_domains_domain` ON `job_watch_domains` (`domain`);--> statement-breakpoint
ALTER TABLE `accounts` ADD `watch_default` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `jobs` ADD `watch_days` integer;--> statement-breakpoint
ALTER TABLE `jobs` ADD `watch_until` integer;--> statement-breakpoint
ALTER TABLE `jobs` ADD `watch_rounds` integer DEFAULT 0 NOT NULL;