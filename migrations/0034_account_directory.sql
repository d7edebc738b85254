CREATE TABLE `account_lookups` (
	`kind` text NOT NULL,
	`value` text NOT NULL,
	`account_id` text NOT NULL,
	`created_at` integer,
	PRIMARY KEY(`kind`, `value`)
);
--> statement-breakpoint
CREATE TABLE `account_shards` (
	`account_id` text PRIMARY KEY NOT NULL,
	`shard` integer NOT NULL
);
--> statement-breakpoint
PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_signup_grant_mailboxes` (
	`mailbox` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`granted_at` integer NOT NULL
);
--> statement-breakpoint
INSERT INTO `__new_signup_grant_mailboxes`("mailbox", "account_id", "granted_at") SELECT "mailbox", "account_id", "granted_at" FROM `signup_grant_mailboxes`;--> statement-breakpoint
DROP TABLE `signup_grant_mailboxes`;--> statement-breakpoint
ALTER TABLE `__new_signup_grant_mailboxes` RENAME TO `signup_grant_mailboxes`;--> statement-breakpoint
PRAGMA foreign_keys=ON;;--> statement-breakpoint
-- Every account so far lives in this database, shard 0; the backfill finds nothing in a shard's.
INSERT INTO `account_shards` (`account_id`, `shard`) SELECT `id`, 0 FROM `accounts`;--> statement-breakpoint
INSERT INTO `account_lookups` (`kind`, `value`, `account_id`) SELECT 'key', `key_hash`, `account_id` FROM `api_keys`;--> statement-breakpoint
INSERT INTO `account_lookups` (`kind`, `value`, `account_id`) SELECT 'email', `email`, `id` FROM `accounts` WHERE `email` IS NOT NULL;--> statement-breakpoint
INSERT INTO `account_lookups` (`kind`, `value`, `account_id`, `created_at`) SELECT 'session', `token_hash`, `account_id`, `created_at` FROM `sessions`;--> statement-breakpoint
INSERT INTO `account_lookups` (`kind`, `value`, `account_id`) SELECT 'endpoint', `id`, `account_id` FROM `outcome_endpoints`;--> statement-breakpoint
INSERT INTO `account_lookups` (`kind`, `value`, `account_id`) SELECT 'payment_intent', `payment_intent_id`, `account_id` FROM `purchases` WHERE `payment_intent_id` IS NOT NULL;
