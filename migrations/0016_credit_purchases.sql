CREATE TABLE `account_billing` (
	`account_id` text PRIMARY KEY NOT NULL,
	`stripe_customer_id` text,
	`payment_method_id` text,
	`payment_method_label` text,
	`low_balance_threshold` integer,
	`low_balance_notified_at` integer,
	`auto_top_up_threshold` integer,
	`auto_top_up_credits` integer,
	`top_up_purchase_id` text,
	`top_up_started_at` integer,
	`top_up_failure` text,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `account_billing_stripe_customer_id_unique` ON `account_billing` (`stripe_customer_id`);--> statement-breakpoint
CREATE TABLE `purchases` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`kind` text NOT NULL,
	`credits` integer NOT NULL,
	`amount` integer NOT NULL,
	`currency` text NOT NULL,
	`status` text NOT NULL,
	`checkout_session_id` text,
	`payment_intent_id` text,
	`amount_refunded` integer DEFAULT 0 NOT NULL,
	`credits_taken_back` integer DEFAULT 0 NOT NULL,
	`failure_reason` text,
	`created_at` integer NOT NULL,
	`paid_at` integer,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `purchases_checkout_session_id_unique` ON `purchases` (`checkout_session_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `purchases_payment_intent_id_unique` ON `purchases` (`payment_intent_id`);--> statement-breakpoint
CREATE INDEX `purchases_account` ON `purchases` (`account_id`,`created_at`);--> statement-breakpoint
DROP INDEX `credit_ledger_once`;--> statement-breakpoint
CREATE UNIQUE INDEX `credit_ledger_once` ON `credit_ledger` (`reference`,`reason`) WHERE reason IN ('verify', 'verify_refund', 'bulk_charge', 'bulk_refund', 'signup_grant', 'purchase', 'purchase_refund');