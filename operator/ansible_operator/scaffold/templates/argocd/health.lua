-- The health of a custom resource that an Ansible operator reconciles, from the conditions it
-- writes: kstatus's Reconciling, Stalled and Ready, else upstream's Successful and Failure.
local health = {status = "Progressing", message = "Waiting for the operator to reconcile it"}
if obj.status == nil or obj.status.conditions == nil then
  return health
end
local generation = obj.metadata.generation
local observed = obj.status.observedGeneration
if generation ~= nil and observed ~= nil and observed ~= generation then
  health.message = "Waiting for the operator to reconcile generation " .. generation
  return health
end
local found = {}
for _, condition in ipairs(obj.status.conditions) do
  if condition.type ~= nil then
    found[condition.type] = condition
  end
end
local function holds(kind)
  return found[kind] ~= nil and found[kind].status == "True"
end
if holds("Stalled") and found.Stalled.reason == "Held" then
  -- held for review (the hold annotation): waiting for a person, as a paused rollout does
  return {status = "Suspended", message = found.Stalled.message}
end
if holds("Stalled") then
  return {status = "Degraded", message = found.Stalled.message}
end
if holds("Reconciling") then
  if found.Reconciling.reason == "RetryingAfterFailure" then
    return {status = "Degraded", message = found.Reconciling.message}
  end
  return {status = "Progressing", message = found.Reconciling.message}
end
if holds("Ready") then
  return {status = "Healthy", message = found.Ready.message}
end
if holds("Failure") then
  return {status = "Degraded", message = found.Failure.message}
end
if found.Ready ~= nil then
  return {status = "Progressing", message = found.Ready.message}
end
if holds("Successful") then
  return {status = "Healthy", message = found.Successful.message}
end
return health
