CREATE TABLE `domain_facts` (
	`domain` text PRIMARY KEY NOT NULL,
	`route` text,
	`route_key` text,
	`route_expires_at` integer,
	`provider` text,
	`catch_all_reply` text,
	`catch_all` integer,
	`catch_all_expires_at` integer,
	`tenant` text,
	`tenant_expires_at` integer,
	`changed_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `verifications` ADD `address` text;--> statement-breakpoint
CREATE INDEX `verifications_address` ON `verifications` (`account_id`,`address`,`created_at`) WHERE address IS NOT NULL;