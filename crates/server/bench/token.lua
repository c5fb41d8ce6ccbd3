-- wrk script: client_credentials token requests with HTTP Basic client authentication.
-- The credentials come from the environment: AUTH = base64("client_id:secret").
wrk.method = "POST"
wrk.body = "grant_type=client_credentials"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
wrk.headers["Authorization"] = "Basic " .. os.getenv("AUTH")

local statuses = {}
response = function(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end
