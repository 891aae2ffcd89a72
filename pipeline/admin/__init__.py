"""What operators read and steer: status and monitoring views, metrics, jobs, tenants."""
