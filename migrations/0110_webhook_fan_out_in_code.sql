-- The fan-out of an event to the webhooks that subscribe to it is written by the store, in the
-- transaction of the event (src/store/sqlite/events.ts), as every engine must do it: no trigger.
DROP TRIGGER events_fan_out_to_webhooks;
