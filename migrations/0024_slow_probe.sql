ALTER TABLE `domain_facts` ADD `slow_probe_s` integer;--> statement-breakpoint
ALTER TABLE `domain_facts` ADD `slow_probe_timed_out` integer;--> statement-breakpoint
ALTER TABLE `domain_facts` ADD `slow_probe_expires_at` integer;