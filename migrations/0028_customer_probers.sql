ALTER TABLE `accounts` ADD `shared_fleet_fallback` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `prober_tokens` ADD `account_id` text;