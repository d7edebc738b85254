CREATE TABLE `idempotency_keys` (
	`account_id` text NOT NULL,
	`key` text NOT NULL,
	`fingerprint` text NOT NULL,
	`state` text NOT NULL,
	`response_status` integer,
	`response_body` text,
	`created_at` integer NOT NULL,
	`locked_at` integer NOT NULL,
	PRIMARY KEY(`account_id`, `key`),
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `idempotency_keys_created` ON `idempotency_keys` (`created_at`);--> statement-breakpoint
DROP INDEX `credit_ledger_once`;--> statement-breakpoint
CREATE UNIQUE INDEX `credit_ledger_once` ON `credit_ledger` (`reference`,`reason`) WHERE reason IN ('verify', 'verify_refund', 'bulk_charge', 'bulk_refund');--> statement-breakpoint
CREATE INDEX `verifications_open` ON `verifications` (`created_at`) WHERE kind = 'single' AND status IS NULL;