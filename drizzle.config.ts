import { defineConfig } from 'drizzle-kit';

export default defineConfig({
  dialect: 'sqlite',
  schema: './edge/src/storage/schema.ts',
  out: './migrations',
});
