ALTER TABLE `api_keys` ADD `kind` text DEFAULT 'secret' NOT NULL;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `scopes` text;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `allowed_cidrs` text;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `allowed_origins` text;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `daily_cap` integer;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `publishable_key` text;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `turnstile_secret` text;