CREATE TABLE `desk_batches` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `accounts` ADD `credits_reserved` integer DEFAULT 0 NOT NULL;