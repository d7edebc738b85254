declare namespace Cloudflare {
  interface Env {
    TEST_MIGRATIONS: import('cloudflare:test').D1Migration[];
    TEST_SMTP_PORT: string;
    SECRETS_KEY: string;
    BATCH_MAX_ATTEMPTS: string;
    STRIPE_API_URL: string;
    STRIPE_SECRET_KEY: string;
  }
}
