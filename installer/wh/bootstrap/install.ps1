# wh bundle bootstrap (Windows PowerShell): needs only Python, never the network.
#   powershell -ExecutionPolicy Bypass -File install.ps1 [-Venv C:\path\to\venv] [-Python py]
#       [-Trust C:\keys\maker.pub] [-AllowUnsigned]
# The target venv is created if missing, with the bundle's target Python (`py -3.X`, X from
# python-version= in bundle.txt); wh itself goes into <bundle>\.wh-venv. The bundle installs
# only when a -Trust key signed it, or with -AllowUnsigned.
param(
    [string]$Venv = (Join-Path $PSScriptRoot "venv"),
    [string]$Python = "",
    [string]$WhVenv = (Join-Path $PSScriptRoot ".wh-venv"),
    [string[]]$Trust = @(),
    [switch]$AllowUnsigned
)
$ErrorActionPreference = "Stop"
$Here = $PSScriptRoot
$Info = Get-Content (Join-Path $Here "bundle.txt")
$WhVersion = ($Info | Where-Object { $_ -like "wh-version=*" }).Substring(11)
$PyVersion = ($Info | Where-Object { $_ -like "python-version=*" } | ForEach-Object { $_.Substring(15) })

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
    # the launcher's -3 is the newest Python, which `wh install --locked` then refuses
    if ($PyVersion -and (Get-Command py -ErrorAction SilentlyContinue)) { return @("py", "-$PyVersion") }
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
$Extra = @()
foreach ($k in $Trust) { $Extra += @("--trust", $k) }
if ($AllowUnsigned) { $Extra += "--allow-unsigned" }
& $WhExe install --locked --bundle $Here --python $TargetPython @Extra
exit $LASTEXITCODE
