CREATE TABLE `accounts` (
	`id` text PRIMARY KEY NOT NULL,
	`email` text,
	`password_hash` text,
	`credit_balance` integer DEFAULT 0 NOT NULL,
	`webhook_url` text,
	`webhook_secret` text,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `accounts_email_unique` ON `accounts` (`email`);--> statement-breakpoint
CREATE TABLE `api_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`name` text NOT NULL,
	`mode` text NOT NULL,
	`key_hash` text NOT NULL,
	`prefix` text NOT NULL,
	`created_at` integer NOT NULL,
	`last_used_at` integer,
	`revoked_at` integer,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_key_hash_unique` ON `api_keys` (`key_hash`);--> statement-breakpoint
CREATE INDEX `api_keys_account` ON `api_keys` (`account_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `credit_ledger` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`account_id` text NOT NULL,
	`delta` integer NOT NULL,
	`balance_after` integer NOT NULL,
	`reason` text NOT NULL,
	`reference` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `credit_ledger_account` ON `credit_ledger` (`account_id`,`created_at`);--> statement-breakpoint
CREATE UNIQUE INDEX `credit_ledger_once` ON `credit_ledger` (`reference`,`reason`) WHERE reason IN ('bulk_charge', 'bulk_refund');--> statement-breakpoint
CREATE TABLE `job_addresses` (
	`job_id` text NOT NULL,
	`idx` integer NOT NULL,
	`email` text NOT NULL,
	`domain` text NOT NULL,
	`state` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`enqueued_at` integer NOT NULL,
	`status` text,
	`sub_status` text,
	`catch_all` integer,
	`refundable` integer DEFAULT 0 NOT NULL,
	`result_json` text,
	PRIMARY KEY(`job_id`, `idx`)
);
--> statement-breakpoint
CREATE INDEX `job_addresses_state` ON `job_addresses` (`job_id`,`state`,`enqueued_at`);--> statement-breakpoint
CREATE TABLE `job_rows` (
	`job_id` text NOT NULL,
	`row` integer NOT NULL,
	`input` text NOT NULL,
	`address_idx` integer,
	`result_json` text,
	`csv_values` text,
	PRIMARY KEY(`job_id`, `row`)
);
--> statement-breakpoint
CREATE TABLE `jobs` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`api_key_id` text,
	`name` text,
	`status` text NOT NULL,
	`source` text NOT NULL,
	`total_rows` integer NOT NULL,
	`total_emails` integer NOT NULL,
	`duplicate_count` integer NOT NULL,
	`empty_rows` integer NOT NULL,
	`invalid_rows` integer NOT NULL,
	`skipped_rows` integer NOT NULL,
	`processed_emails` integer DEFAULT 0 NOT NULL,
	`deliverable_count` integer DEFAULT 0 NOT NULL,
	`undeliverable_count` integer DEFAULT 0 NOT NULL,
	`risky_count` integer DEFAULT 0 NOT NULL,
	`unknown_count` integer DEFAULT 0 NOT NULL,
	`catch_all_count` integer DEFAULT 0 NOT NULL,
	`refundable_count` integer DEFAULT 0 NOT NULL,
	`credits_charged` integer NOT NULL,
	`credits_refunded` integer DEFAULT 0 NOT NULL,
	`finalized` integer DEFAULT 0 NOT NULL,
	`csv_headers` text,
	`webhook_url` text,
	`failure_reason` text,
	`created_at` integer NOT NULL,
	`completed_at` integer,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `jobs_account` ON `jobs` (`account_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `jobs_status` ON `jobs` (`status`,`created_at`);--> statement-breakpoint
CREATE TABLE `prober_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`region` text NOT NULL,
	`token_hash` text NOT NULL,
	`prefix` text NOT NULL,
	`created_at` integer NOT NULL,
	`last_seen_at` integer,
	`revoked_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `prober_tokens_token_hash_unique` ON `prober_tokens` (`token_hash`);--> statement-breakpoint
CREATE TABLE `sessions` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`last_seen_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `sessions_account` ON `sessions` (`account_id`);--> statement-breakpoint
CREATE INDEX `sessions_expires` ON `sessions` (`expires_at`);--> statement-breakpoint
CREATE TABLE `verifications` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`api_key_id` text,
	`kind` text NOT NULL,
	`email` text,
	`job_id` text,
	`status` text,
	`sub_status` text,
	`score` integer,
	`result_json` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `verifications_account` ON `verifications` (`account_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `verifications_created` ON `verifications` (`created_at`);--> statement-breakpoint
CREATE TABLE `webhook_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`job_id` text,
	`event_type` text NOT NULL,
	`url` text NOT NULL,
	`payload` text NOT NULL,
	`state` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`last_status` integer,
	`last_error` text,
	`next_attempt_at` integer,
	`created_at` integer NOT NULL,
	`delivered_at` integer,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `webhook_deliveries_account` ON `webhook_deliveries` (`account_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_due` ON `webhook_deliveries` (`state`,`next_attempt_at`);