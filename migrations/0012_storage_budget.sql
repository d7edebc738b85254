CREATE TABLE `storage_days` (
	`account_id` text NOT NULL,
	`day` integer NOT NULL,
	`bytes` integer NOT NULL,
	PRIMARY KEY(`account_id`, `day`),
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `storage_days_day` ON `storage_days` (`day`);--> statement-breakpoint
ALTER TABLE `idempotency_keys` ADD `mode` text DEFAULT 'live' NOT NULL;