"""The path and peak model: theoretical peaks of each path with their sources (peaks), a
node's GPU path table (pathtable) and the deployment rules read from it (rules). Built on
results/ only."""
