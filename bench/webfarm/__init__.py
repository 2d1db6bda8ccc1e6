"""A synthetic web for the speed benchmark: static sites on loopback IPs, served by nginx.

- `generate`: write the sites and `spec.json` (`python -m bench.webfarm.generate ROOT`);
- `nginx`: `Nginx(root, spec, access_log=...)` starts and stops a private nginx for them;
- `accesslog`: read nginx's JSON access log as `RequestLogRecord`s for the politeness check.
"""
