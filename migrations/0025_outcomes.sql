CREATE TABLE `outcome_endpoints` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`provider` text NOT NULL,
	`credential` text NOT NULL,
	`created_at` integer NOT NULL,
	`revoked_at` integer,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `outcome_endpoints_account` ON `outcome_endpoints` (`account_id`);--> statement-breakpoint
CREATE TABLE `outcome_hook_nonces` (
	`endpoint_id` text NOT NULL,
	`nonce` text NOT NULL,
	`body_digest` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`endpoint_id`, `nonce`)
);
--> statement-breakpoint
CREATE INDEX `outcome_hook_nonces_created` ON `outcome_hook_nonces` (`created_at`);--> statement-breakpoint
CREATE TABLE `outcomes` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`api_key_id` text,
	`source` text NOT NULL,
	`event_key` text NOT NULL,
	`email` text NOT NULL,
	`outcome` text NOT NULL,
	`at` integer NOT NULL,
	`diagnostic` text,
	`bounce_sub_status` text,
	`bounce_kind` text,
	`verdict_source` text,
	`verdict_ref` text,
	`verdict_at` integer,
	`verdict_status` text,
	`verdict_sub_status` text,
	`verdict_provider` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `outcomes_event` ON `outcomes` (`account_id`,`event_key`,`email`);--> statement-breakpoint
CREATE INDEX `outcomes_account` ON `outcomes` (`account_id`,`at`);--> statement-breakpoint
CREATE INDEX `outcomes_created` ON `outcomes` (`created_at`);--> statement-breakpoint
CREATE INDEX `job_addresses_email` ON `job_addresses` (`email`);