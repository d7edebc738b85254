ALTER TABLE `domain_facts` ADD `greylist_delay_s` integer;--> statement-breakpoint
ALTER TABLE `domain_facts` ADD `greylist_delay_expires_at` integer;