DROP INDEX `credit_ledger_once`;--> statement-breakpoint
CREATE UNIQUE INDEX `credit_ledger_once` ON `credit_ledger` (`reference`,`reason`) WHERE reason IN ('verify', 'verify_refund', 'bulk_charge', 'bulk_refund', 'signup_grant');--> statement-breakpoint
ALTER TABLE `accounts` ADD `email_confirmed_at` integer;