CREATE TABLE `account_lookups` (
	`kind` text NOT NULL,
	`value` text NOT NULL,
	`account_id` text NOT NULL,
	PRIMARY KEY(`kind`, `value`)
);
--> statement-breakpoint
CREATE TABLE `account_shards` (
	`account_id` text PRIMARY KEY NOT NULL,
	`shard` integer NOT NULL
);
--> statement-breakpoint
-- Every account so far lives in this database, shard 0; the backfill finds nothing in a shard's.
INSERT INTO `account_shards` (`account_id`, `shard`) SELECT `id`, 0 FROM `accounts`;--> statement-breakpoint
INSERT INTO `account_lookups` (`kind`, `value`, `account_id`) SELECT 'key', `key_hash`, `account_id` FROM `api_keys`;
