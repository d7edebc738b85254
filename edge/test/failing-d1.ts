// A D1 binding whose statements matching a pattern fail when run, as a D1 write does when the
// database is unavailable: a batch holding one of them rolls back entirely.
export function failingD1(d1: D1Database, failing: RegExp): D1Database {
  return new Proxy(d1, {
    get(target, property) {
      if (property === 'prepare') {
        return (sql: string) => target.prepare(failing.test(sql) ? 'SELECT injected_d1_failure()' : sql);
      }
      const value = Reflect.get(target, property);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
