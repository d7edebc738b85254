CREATE TABLE `domain_accepted_bounces` (
	`domain` text NOT NULL,
	`account_id` text NOT NULL,
	`bounces` integer NOT NULL,
	`last_at` integer NOT NULL,
	PRIMARY KEY(`domain`, `account_id`)
);
--> statement-breakpoint
DROP INDEX `credit_ledger_once`;--> statement-breakpoint
CREATE UNIQUE INDEX `credit_ledger_once` ON `credit_ledger` (`reference`,`reason`) WHERE reason IN ('verify', 'verify_refund', 'bulk_charge', 'bulk_refund', 'signup_grant', 'purchase', 'purchase_refund', 'dispute_hold', 'dispute_return', 'debt_settlement', 'guarantee_refund');--> statement-breakpoint
ALTER TABLE `domain_facts` ADD `accepted_bounces` integer;--> statement-breakpoint
ALTER TABLE `domain_facts` ADD `accepted_bounce_accounts` integer;--> statement-breakpoint
ALTER TABLE `domain_facts` ADD `accepted_bounces_at` integer;--> statement-breakpoint
CREATE INDEX `outcomes_account_email` ON `outcomes` (`account_id`,`email`,`at`);