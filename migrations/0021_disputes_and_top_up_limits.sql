CREATE TABLE `disputes` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`purchase_id` text NOT NULL,
	`amount` integer NOT NULL,
	`status` text NOT NULL,
	`credits_owed` integer NOT NULL,
	`credits_held` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	`closed_at` integer,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`purchase_id`) REFERENCES `purchases`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `disputes_account` ON `disputes` (`account_id`,`created_at`);--> statement-breakpoint
DROP INDEX `credit_ledger_once`;--> statement-breakpoint
CREATE UNIQUE INDEX `credit_ledger_once` ON `credit_ledger` (`reference`,`reason`) WHERE reason IN ('verify', 'verify_refund', 'bulk_charge', 'bulk_refund', 'signup_grant', 'purchase', 'purchase_refund', 'dispute_hold', 'dispute_return', 'debt_settlement');--> statement-breakpoint
ALTER TABLE `account_billing` ADD `auto_top_up_daily_limit` integer DEFAULT 3 NOT NULL;--> statement-breakpoint
ALTER TABLE `account_billing` ADD `top_up_limit_notified_at` integer;--> statement-breakpoint
ALTER TABLE `accounts` ADD `open_disputes` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `accounts` ADD `credit_debt` integer DEFAULT 0 NOT NULL;