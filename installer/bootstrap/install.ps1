# wh bundle bootstrap (Windows PowerShell): needs only Python, never the network.
#   powershell -ExecutionPolicy Bypass -File install.ps1 [-Venv C:\path\to\venv] [-Python py]
# The target venv is created if missing; wh itself goes into <bundle>\.wh-venv.
param(
    [string]$Venv = (Join-Path $PSScriptRoot "venv"),
    [string]$Python = "",
    [string]$WhVenv = (Join-Path $PSScriptRoot ".wh-venv")
)
$ErrorActionPreference = "Stop"
$Here = $PSScriptRoot
$WhVersion = ((Get-Content (Join-Path $Here "bundle.txt")) | Where-Object { $_ -like "wh-version=*" }).Substring(11)

# No configured index, proxy or constraint may interfere: everything comes from the bundle.
$env:PIP_CONFIG_FILE = "nul"
$env:PIP_NO_INDEX = "1"
$env:PIP_DISABLE_PIP_VERSION_CHECK = "1"
foreach ($v in "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_CONSTRAINT") {
    Remove-Item "Env:$v" -ErrorAction SilentlyContinue
}

function Invoke-Checked([string]$Exe, [string[]]$Arguments) {
    & $Exe @Arguments
    if ($LASTEXITCODE -ne 0) { throw "$Exe $($Arguments -join ' ') failed with exit code $LASTEXITCODE" }
}

function Get-BasePython {
    if ($Python) { return @($Python) }
    if (Get-Command py -ErrorAction SilentlyContinue) { return @("py", "-3") }
    return @("python")
}

$Base = @(Get-BasePython)
$BaseArgs = @($Base | Select-Object -Skip 1)
$WhExe = Join-Path $WhVenv "Scripts\wh.exe"
if (-not (Test-Path $WhExe)) {
    Write-Host "installing wh $WhVersion into $WhVenv (from the bundle, offline)"
    Invoke-Checked $Base[0] ($BaseArgs + @("-m", "venv", $WhVenv))
    Invoke-Checked (Join-Path $WhVenv "Scripts\python.exe") @("-m", "pip", "install", "--quiet", "--isolated", "--no-index", "--find-links", (Join-Path $Here "wh"), "wh==$WhVersion")
}
$TargetPython = Join-Path $Venv "Scripts\python.exe"
if (-not (Test-Path $TargetPython)) {
    Write-Host "creating the target environment $Venv"
    Invoke-Checked $Base[0] ($BaseArgs + @("-m", "venv", $Venv))
}
& $WhExe install --locked --bundle $Here --python $TargetPython
exit $LASTEXITCODE
