// A D1 binding whose statements matching a pattern fail when run, as a D1 write does when the
// database is unavailable: a batch holding one of them rolls back entirely. With `times`, only
// that many of them fail (a passing outage); the binding's sessions (a request's reads and writes,
// createRequestDb) fail alike.
export function failingD1(d1: D1Database, failing: RegExp, options: { times?: number } = {}): D1Database {
  let failuresLeft = options.times ?? Number.POSITIVE_INFINITY;
  const fails = (sql: string) => {
    if (failuresLeft <= 0 || !failing.test(sql)) return false;
    failuresLeft--;
    return true;
  };
  const failingOn = <Target extends D1Database | D1DatabaseSession>(target: Target): Target =>
    new Proxy(target, {
      get(inner, property) {
        if (property === 'prepare') {
          return (sql: string) => inner.prepare(fails(sql) ? 'SELECT injected_d1_failure()' : sql);
        }
        if (property === 'withSession') {
          return (...args: Parameters<D1Database['withSession']>) =>
            failingOn((inner as D1Database).withSession(...args));
        }
        const value = Reflect.get(inner, property);
        return typeof value === 'function' ? value.bind(inner) : value;
      },
    });
  return failingOn(d1);
}
